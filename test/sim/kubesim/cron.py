"""Cron schedules as the CronJob controller reads them (robfig/cron's standard parser):
five fields (minute hour day-of-month month day-of-week) of `*`, numbers, ranges
`a-b`, steps `*/n` and `a-b/n`, lists, month and weekday names (JAN, SUN; 7 is Sunday
too), and the macros @yearly @annually @monthly @weekly @daily @midnight @hourly.
When both day fields are restricted, a day matching either one matches (cron's rule).
Times are evaluated in a time zone (zoneinfo; the default is UTC, the simulator's
kube-controller-manager's)."""

import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
          "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
          "@hourly": "0 * * * *"}
MONTHS = {m: i + 1 for i, m in enumerate("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC".split())}
DAYS = {d: i for i, d in enumerate("SUN MON TUE WED THU FRI SAT".split())}


class CronError(ValueError):
    pass


def _field(text, lo, hi, names=None):
    out = set()
    for part in text.split(","):
        step = 1
        if "/" in part:
            part, s = part.split("/", 1)
            if not s.isdigit() or int(s) == 0:
                raise CronError("invalid step %r" % s)
            step = int(s)
        if part == "*":
            a, b = lo, hi
        else:
            ends = part.split("-", 1)
            try:
                vals = [names[e.upper()] if names and e.upper() in names else int(e) for e in ends]
            except ValueError:
                raise CronError("invalid value %r" % part) from None
            a, b = vals[0], vals[-1] if len(vals) == 2 else (hi if step > 1 else vals[0])
        if hi == 6 and b == 7:   # Sunday as 7
            out.add(0)
            if a == 7:
                continue
            b = 6
        if a < lo or b > hi or a > b:
            raise CronError("value out of range [%d,%d]: %r" % (lo, hi, part))
        out.update(range(a, b + 1, step))
    return out


class Schedule:
    def __init__(self, text, tz=None):
        spec = MACROS.get(text.strip(), text.strip())
        fields = spec.split()
        if len(fields) != 5:
            raise CronError("expected exactly 5 fields, found %d: %r" % (len(fields), text))
        self.minute = _field(fields[0], 0, 59)
        self.hour = _field(fields[1], 0, 23)
        self.dom = _field(fields[2], 1, 31)
        self.month = _field(fields[3], 1, 12, MONTHS)
        self.dow = _field(fields[4], 0, 6, DAYS)
        self.dom_any, self.dow_any = fields[2].startswith("*"), fields[4].startswith("*")
        try:
            self.tz = ZoneInfo(tz) if tz else datetime.timezone.utc
        except (ZoneInfoNotFoundError, ValueError):
            raise CronError("unknown time zone %s" % tz) from None

    def _day_ok(self, d):
        dom, dow = d.day in self.dom, (d.weekday() + 1) % 7 in self.dow
        if self.dom_any or self.dow_any:
            return dom and dow
        return dom or dow

    def next_after(self, t):
        """The first scheduled time strictly after epoch seconds `t`, as epoch seconds."""
        d = datetime.datetime.fromtimestamp(t, self.tz).replace(second=0, microsecond=0) + \
            datetime.timedelta(minutes=1)
        for _ in range(100000):
            if d.month not in self.month:
                d = (d.replace(day=1, hour=0, minute=0) + datetime.timedelta(days=32)).replace(day=1)
            elif not self._day_ok(d):
                d = d.replace(hour=0, minute=0) + datetime.timedelta(days=1)
            elif d.hour not in self.hour:
                d = d.replace(minute=0) + datetime.timedelta(hours=1)
            elif d.minute not in self.minute:
                d += datetime.timedelta(minutes=1)
            else:
                return d.timestamp()
        raise CronError("no time matches the schedule")
