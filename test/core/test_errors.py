"""robot_dynid/errors.py: an error as one line, for a log, a status field or a command's stderr."""
from robot_dynid.errors import DataError, message_line, one_line


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message")


def test_one_line_collapses_the_message_and_names_the_type_of_what_is_not_a_dynid_error():
    assert one_line(DataError("bad\n  column  q.j1")) == "bad column q.j1"
    assert one_line(RecursionError("maximum recursion depth exceeded")) == \
        "RecursionError: maximum recursion depth exceeded"
    assert one_line(KeyError()) == "KeyError"
    assert one_line(Unprintable()) == "Unprintable"


def test_one_line_cuts_at_its_limit_and_says_so():
    text = one_line(DataError("x" * 1000), limit=20)
    assert text == "x" * 17 + "..." and len(text) == 20
    assert one_line(DataError("x" * 1000)) == "x" * 1000


def test_message_line_is_the_message_alone_on_one_line():
    assert message_line(ValueError("no element found:\n\tline 3,  column 0")) == "no element found: line 3, column 0"
    assert message_line(OSError("")) == ""
    assert message_line(Unprintable()) == ""
