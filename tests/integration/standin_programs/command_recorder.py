"""A local.Command shaped like the lab's kind cluster: it records each create and delete in a log file."""

import pulumi
from pulumi_command import local

config = pulumi.Config()
trigger = config.require("trigger")
create = 'echo "create $TRIGGER" >> "$RUN_LOG"\necho "built $TRIGGER"\n'
fail_with = config.get("failWith")
if fail_with:
    create = f'echo "{fail_with}" >&2\nexit 7\n'
command = local.Command(
    "recorder",
    create=create,
    delete='echo "delete $TRIGGER after $PULUMI_COMMAND_STDOUT" >> "$RUN_LOG"',
    environment={"RUN_LOG": config.require("runLog"), "TRIGGER": trigger, "TOKEN": config.require_secret("token")},
    triggers=[trigger],
    opts=pulumi.ResourceOptions(additional_secret_outputs=["stdout"]),
)
pulumi.export("stdout", command.stdout)
