from builder.cli.entry import run

run()
