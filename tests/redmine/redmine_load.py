# SPDX-License-Identifier: MIT
"""Keep-alive load on Redmine, for tests/redmine: tests/rails's Load (its
threads, counters and rate) with clients that walk issue pages (HTML and
.json), issue lists, project pages and the REST API, each URL with a
`_=` parameter that never repeats (Redmine's issue query reads `t`).
(Not load.py: pytest imports tests/rails's by that bare name.)"""
import http.client
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rails"))
from load import Load  # noqa: E402

# What a client asks for, in turn; "api": with the admin's API key
PAGES = [
    ("/issues/{issue}", False),
    ("/issues/{issue}.json", True),
    ("/projects/{project}/issues", False),
    ("/issues/{issue}.json?include=journals", True),
    ("/projects/{project}", False),
    ("/issues.json?project_id={project}&limit=25", True),
    ("/issues/{issue}", False),
    ("/projects.json", True),
]


class RedmineLoad(Load):
    def __init__(self, port, seed, threads=6):
        """SEED: prepare()'s fields (the API key, the issues' ids, the
        projects)."""
        super().__init__(port, threads)
        self.key = seed["api_key"]
        self.first = int(seed["first_issue"])
        self.issues = int(seed["last_issue"]) - self.first + 1
        self.projects = seed["projects"].split(",")

    def path(self, n):
        """The Nth request's path: issues spread over all of them."""
        page, api = PAGES[n % len(PAGES)]
        page = page.format(issue=self.first + n * 7919 % self.issues,
                           project=self.projects[n % len(self.projects)])
        sep = "&" if "?" in page else "?"
        return f"{page}{sep}_={n}", api

    def client(self, n):
        conn = None
        i = 0
        while not self.stop.is_set():
            path, api = self.path(n * 1_000_000 + i)
            i += 1
            headers = {"Connection": "keep-alive"}
            if api:
                headers["X-Redmine-API-Key"] = self.key
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request("GET", path, headers=headers)
                r = conn.getresponse()
                r.read()
                with self.lock:
                    if r.status == 200:
                        self.ok += 1
                    else:
                        self.errors.append(f"HTTP {r.status} {path}")
            except (OSError, http.client.HTTPException) as e:
                with self.lock:
                    self.errors.append(f"{e!r} {path}")
                conn = None
