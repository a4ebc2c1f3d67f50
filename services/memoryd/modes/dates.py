"""A record's time written out in words, so that "when" questions ("in May 2023", "on 8 May")
meet it: the context mode's date column."""

import datetime as dt

MONTHS = (
    "January February March April May June July August September October November December"
).split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()


def date_words(time: str) -> str:
    """'2023-05-08T13:56:00Z' -> 'Monday 8 May 2023'; '' for a time that is not a date."""
    try:
        day = dt.date.fromisoformat(time[:10])
    except (TypeError, ValueError):
        return ""
    return f"{DAYS[day.weekday()]} {day.day} {MONTHS[day.month - 1]} {day.year}"
