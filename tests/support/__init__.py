"""What tests share: fakes that fail the way the real parts fail, real servers started on
127.0.0.1, builders of jobs and manifests, the CLI in a subprocess (forked from a warm launcher in
the fast lane), an end-to-end workspace.
Tests import from here, never from one another."""
