# SPDX-License-Identifier: MIT
# Ruby threads being raised into and killed while we attach: Thread#raise
# and Thread#kill make Ruby send SIGVTALRM to threads with pthread_kill.
# Prints "ready", and on stdin EOF "rthreads ok raised" if raises arrived.
$stdout.sync = true
raised = 0
lock = Mutex.new

# Raises are taken only while sleeping, never inside the rescue; the
# mask is set around Thread.new because a new thread inherits it.
worker = lambda do
  Thread.handle_interrupt(RuntimeError => :never) do
    Thread.new do
      loop do
        begin
          Thread.handle_interrupt(RuntimeError => :immediate) do
            loop { sleep 0.001; "w" * 100 }
          end
        rescue RuntimeError
          lock.synchronize { raised += 1 }
        end
      end
    end
  end
end

workers = Array.new(4) { worker.call }
stop = false
controller = Thread.new do
  until stop
    workers.each { |t| t.raise("poke") if t.alive? }
    victim = workers.shift
    victim.kill
    victim.join
    workers << worker.call
    sleep 0.005
  end
end
puts "ready"
$stdin.read
stop = true
controller.join
puts "rthreads ok #{raised.positive? ? 'raised' : 'none'}"
