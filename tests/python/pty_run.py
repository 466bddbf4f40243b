# Runs a program on a pseudo-terminal, as a person at a terminal would (tests/node/cli-sealed.test.ts):
# each line of $ANSWERS is typed once the program has asked for a passphrase (its output ends with
# ": " and names one more passphrase than before), then everything it wrote to the terminal is
# printed and its exit status is this one's. What the terminal echoed is in that output.
#
#   ANSWERS=$'one\ntwo' python pty_run.py node bin/shardgate.mjs put f b/k --encrypt
import os, pty, select, sys, time
answers = os.environ["ANSWERS"].split("\n")
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out = b""
def pump(until=None, timeout=60.0):
    global out
    end = time.time() + timeout
    while time.time() < end and (until is None or not until()):
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return False
            if not data:
                return False
            out += data
    return True
for i, answer in enumerate(answers):
    if not pump(lambda: out.lower().count(b"passphrase") > i and out.endswith(b": ")):
        break
    os.write(fd, answer.encode() + b"\r")
pump()
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.exit(os.waitstatus_to_exitcode(status))
