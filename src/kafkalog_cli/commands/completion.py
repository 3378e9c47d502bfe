"""`kafkalog completion SHELL`: print the shell completion script (bash, zsh or fish)."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class


@click.command("completion", short_help="Print the shell completion script (bash, zsh or fish).")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the completion script for SHELL.

    \b
    bash:  eval "$(kafkalog completion bash)"    (or save it under /etc/bash_completion.d/)
    zsh:   eval "$(kafkalog completion zsh)"
    fish:  kafkalog completion fish > ~/.config/fish/completions/kafkalog.fish

    \b
    Exit codes: 0 printed; 2 a shell other than bash, zsh or fish (usage).
    """
    comp_cls = get_completion_class(shell)  # the root group, whichever program runs this command
    comp = comp_cls(ctx.find_root().command, {}, "kafkalog", "_KAFKALOG_COMPLETE")
    click.echo(comp.source())
