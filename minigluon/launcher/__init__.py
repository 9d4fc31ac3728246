"""The job launcher behind ``tools/launch.py`` and ``minigluon-launch``.

``cli`` reads the options (its docstring is the manual); ``placement`` reads the
hostfile and decides which host runs which process; ``job`` gives each process
its environment; ``address`` finds the scheduler's address and port;
``processes`` starts, watches, prefixes and ends processes; ``local``, ``ssh``,
``mpi`` and ``slurm`` start a job their way; ``bootstrap`` is the small program
that starts one process on its host and makes sure it ends with the job.
"""


class LaunchError(Exception):
    """A job that cannot be launched as asked; the message says what and why."""
