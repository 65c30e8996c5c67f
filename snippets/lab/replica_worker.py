"""A worker process of ``snippets.lab.replicas``: ``python -m snippets.lab.replica_worker`` (a module of its own,
so that the lab's import of ``replicas`` and this entry point never make two copies of one module)."""

from snippets.lab.replicas import serve

if __name__ == "__main__":
    serve()
