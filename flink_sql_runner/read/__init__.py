"""What users write: job manifests, the table catalog (YAML and SQL DDL), and the rules that read
them.
"""
