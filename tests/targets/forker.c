/* SPDX-License-Identifier: MIT */
/* Forks N children (argv[1]) while two threads allocate and free without
 * pause.  Each child allocates from its own thread and from the forking
 * one, then exits 0.  All threads share one malloc arena, so the children
 * use the same live-table shards the threads were busy with.  Prints
 * "forked N" when every child exited within 5 s, else "child K hung" and
 * exits 1 (the hung child is killed).  With "wait" (argv[2]) it prints
 * "ready" once the threads run, forks after a line on stdin (so that a
 * test can attach first) and exits when stdin closes. */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void churn(int rounds)
{
	void *p[256];

	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 256; i++)
			p[i] = malloc(16 + (size_t)(i % 40) * 16);
		for (int i = 0; i < 256; i++)
			free(p[i]);
	}
}

static void *hammer(void *arg)
{
	(void)arg;
	for (;;)
		churn(1);
	return NULL;
}

static void *child_thread(void *arg)
{
	(void)arg;
	churn(20);
	return NULL;
}

static void child_main(void)
{
	pthread_t t;

	churn(20);
	if (pthread_create(&t, NULL, child_thread, NULL) == 0)
		pthread_join(t, NULL);
	_exit(0);
}

/* 1 when @pid exited with status 0 within 5 s. */
static int reaped(pid_t pid)
{
	struct timespec nap = { 0, 2000000 };
	int status;

	for (int i = 0; i < 2500; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0;
		nanosleep(&nap, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	int wait = argc > 2 && !strcmp(argv[2], "wait");
	struct timespec warm = { 0, 50000000 };
	pthread_t t;

	mallopt(M_ARENA_MAX, 1);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t, NULL, hammer, NULL))
			return 2;
	nanosleep(&warm, NULL);
	if (wait) {
		char line[16];

		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 2;
	}
	for (int k = 0; k < n; k++) {
		pid_t pid = fork();

		if (pid < 0)
			return 2;
		if (pid == 0)
			child_main();
		if (!reaped(pid)) {
			printf("child %d hung\n", k);
			return 1;
		}
	}
	printf("forked %d\n", n);
	fflush(stdout);
	while (wait && getchar() != EOF)
		;
	return 0;
}
