"""Command-line mistakes as one line, like every other user error.

Why: typer prints a usage error as a five-line box (usage, a hint, a framed message), while
docs/reference/exit-codes.md promises one line, ``perfdiff: error: <what>, <where>; <what to
do>``. CI logs grep for that line, and 38 usage errors printed the box. So the app runs with
click's standalone mode off, and a click usage error becomes a :class:`UsageError` (exit 2)
whose line names the command, the option or argument and what to do; ``perfdiff`` with no
command, or a command with no arguments, still prints its help.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfdiff.errors import UsageError
from perfdiff.inputs import CheckedInputs


def run_app(app: Callable[..., Any], args: list[str], checked: CheckedInputs | None = None) -> int:
    """Run the typer ``app`` on ``args``; its exit code. Click's usage errors are raised as
    :class:`UsageError` (one line); Ctrl-C at a prompt as :class:`KeyboardInterrupt`.
    ``checked``: the inputs the console script checked, for the commands to hand to the door
    (click's context object)."""
    import typer
    from typer._click import exceptions as click_errors

    from perfdiff.cli.option_limits import check_numeric_options

    check_numeric_options(args)
    try:
        result = app(args=args, standalone_mode=False, prog_name="perfdiff", obj=checked)
    except click_errors.NoArgsIsHelpError as exc:
        exc.show()  # help, as asked for by giving nothing
        return 2
    except click_errors.ClickException as exc:
        raise UsageError(usage_line(exc)) from None
    except typer.Abort:
        raise KeyboardInterrupt from None
    return result if isinstance(result, int) and not isinstance(result, bool) else 0


def usage_line(exc: Any) -> str:
    """One line for a click exception: the command, what is wrong, what to do."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "perfdiff"
    message = " ".join(str(exc.format_message()).split())  # never more than one line
    message = message[0].lower() + message[1:] if message[:1].isupper() else message
    where = command.removeprefix("perfdiff").strip()
    return f"{where + ': ' if where else ''}{message.rstrip('.')}; see '{command} --help'"


__all__ = ["run_app", "usage_line"]
