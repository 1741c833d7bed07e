"""Logging in klog layout on stderr: `Lmmdd hh:mm:ss.uuuuuu pid file:line] msg`."""

import logging
import os
import sys
import time

_LEVELS = {logging.DEBUG: "I", logging.INFO: "I", logging.WARNING: "W", logging.ERROR: "E",
           logging.CRITICAL: "F"}


class KlogFormatter(logging.Formatter):
    def format(self, record):
        t = record.created
        lt = time.localtime(t)
        head = "%s%02d%02d %02d:%02d:%02d.%06d %7d %s:%d] " % (
            _LEVELS.get(record.levelno, "I"), lt.tm_mon, lt.tm_mday, lt.tm_hour, lt.tm_min,
            lt.tm_sec, int((t % 1) * 1e6), os.getpid(), record.filename, record.lineno)
        msg = record.getMessage()
        if record.exc_info:
            msg += "\n" + self.formatException(record.exc_info)
        return head + msg


def setup(verbose):
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(KlogFormatter())
    root = logging.getLogger("kubelet-sim")
    root.handlers[:] = [h]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
    return root


log = logging.getLogger("kubelet-sim")
