"""The command line: thin commands that build a deployment, call it and render what it returns."""
