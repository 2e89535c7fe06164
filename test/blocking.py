"""Calling what might block (a FIFO opened for reading waits for a writer) without hanging the test."""
import threading


def returns_within(function, seconds=10.0):
    """``{"value": function()}`` or ``{"error": exception}``, asserting it came within ``seconds``; a call still
    blocked is left in a daemon thread (the test fails, the run goes on)."""
    outcome = {}

    def call():
        try:
            outcome["value"] = function()
        except Exception as error:      # the outcome under test
            outcome["error"] = error

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    return outcome
