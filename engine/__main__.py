import os
import sys

from engine.orchestrate import forked

forked.start_for_argv(sys.argv[1:])  # a run's process server starts before the CLI's imports
from engine.cli.main import main  # noqa: E402

try:
    code = main()
except KeyboardInterrupt:
    # Ctrl-C before a command's own handling took over (the worker probing the host at start):
    # a stop, not a crash; one line instead of a traceback
    print("stopped (Ctrl-C)", file=sys.stderr)
    code = 130  # 128 + SIGINT, as a shell reports it
except BrokenPipeError:
    # the reader went away (`python -m engine show 1 | head`): stop quietly, as Unix tools
    # do; what is left in the buffer goes nowhere instead of raising again at exit
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    code = 141  # 128 + SIGPIPE, what a shell reports for a tool ended by a closed pipe
forked.stop_unused_servers()  # one still importing would hold our output open
if "torch" in sys.modules:
    # The command is done and everything it wrote is committed (the database's transactions,
    # the children's results). Skip the interpreter's teardown: with torch imported it takes
    # seconds after every `run`, measuring nothing, before a caller sees the command end
    # (docs/measurements/2026-12-03-time-to-answer.md); the measuring child does the same
    # (engine/measure/child.py main). The process server and resource tracker end themselves
    # when their pipes from this process close.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 1)
sys.exit(code)
