#!/bin/sh
# The mixed workload of system programs that tests/perf_system_wide.rs and benches/unwind.rs
# record system-wide (perf record -a): loops of short-lived programs (fork, exec, comm events;
# python3, perl, gcc's cc1 and as, xz, gzip, sha256sum, sort, git), and xz run from a memfd
# through /proc/self/fd/9 (its mapping is `/memfd:stacksym-xz (deleted)`, its comm `9`).
# Stops after $2 seconds (default 2); a program running then finishes its run.
# Usage: system-wide-workload.sh SCRATCH_DIR [SECONDS]

dir=$1
printf 'static int f(int x) { return x * x; }\nint main(void) { return f(3); }\n' >"$dir/t.c"
loop() { while [ ! -e "$dir/stop" ]; do "$@"; done; }
loop sh -c 'xz -2 -c /usr/bin/perl >/dev/null' &
loop sh -c 'python3 -c "import json; json.dumps([list(range(50)) for _ in range(3000)])"' &
loop sh -c 'perl -e "my %h; \$h{\$_ % 977} .= q(x) for 1..100000"; gcc -O2 -c -o /dev/null "$0/t.c"' "$dir" &
loop sh -c 'gzip -c /usr/bin/perl | sha256sum >/dev/null; sort /etc/services >/dev/null; git --version >/dev/null' &
loop python3 -c '
import os, sys
fd = os.memfd_create("stacksym-xz", 0)
os.write(fd, open("/usr/bin/xz", "rb").read())
out = os.open("/dev/null", os.O_WRONLY)
os.dup2(out, 1)
os.dup2(fd, 9)
os.execv("/proc/self/fd/9", ["xz", "-3", "-c", "/usr/bin/perl"])
' &
sleep "${2:-2}"
touch "$dir/stop"
wait
