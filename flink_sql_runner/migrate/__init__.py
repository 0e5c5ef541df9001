"""Migrating from the original tool (flink-sql-runner for Flink): its manifests converted, its
stores moved.
"""
