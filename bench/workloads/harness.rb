# SPDX-License-Identifier: MIT
# Shared protocol of the bench workloads: print "ready", wait for "go"
# on stdin when BENCH_WAIT=1 (so the driver can attach first), run the
# work, print one "result" line with wall and CPU seconds and peak RSS,
# the page faults over the work (minflt, majflt: the whole process's, from
# /proc/self/stat), plus any phases timed with Bench.phase,
# then (BENCH_WAIT=1) wait for stdin to close, so the driver can still
# dump what a tracer saw.
$stdout.sync = true

module Bench
  @phases = {}

  # Times one phase of the work (a phase timed again adds up); its wall
  # seconds join the result line as NAME=SECONDS, its CPU seconds (all
  # threads) as NAME_cpu=SECONDS.
  def self.phase(name)
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    c0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    yield
    cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - c0
    wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
    @phases["#{name}_cpu"] = @phases.fetch("#{name}_cpu", 0.0) + cpu
    @phases[name] = @phases.fetch(name, 0.0) + wall
  end

  # [minflt, majflt] of the whole process (every thread, live or gone)
  def self.faults
    f = File.read("/proc/self/stat").split(") ", 2)[1].split
    [f[7].to_i, f[9].to_i]	# fields 10 and 12 of proc(5)
  end

  def self.run
    puts "ready #{Process.pid}"
    $stdin.gets if ENV["BENCH_WAIT"] == "1"
    f0 = faults
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    c0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    yield
    wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
    cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - c0
    f1 = faults
    @phases["minflt"] = f1[0] - f0[0]
    @phases["majflt"] = f1[1] - f0[1]
    hwm = File.read("/proc/self/status")[/VmHWM:\s+(\d+)/, 1].to_i * 1024
    extra = @phases.map { |k, v| v.is_a?(Integer) ? " #{k}=#{v}" : format(" %s=%.6f", k, v) }.join
    puts format("result wall=%.6f cpu=%.6f rss_peak=%d%s", wall, cpu, hwm, extra)
    $stdin.read if ENV["BENCH_WAIT"] == "1"
  end

  def self.scale
    Float(ENV.fetch("BENCH_SCALE", "1"))
  end
end
