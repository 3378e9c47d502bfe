from kafkalog_cli.cli import cli

cli(prog_name="kafkalog")
