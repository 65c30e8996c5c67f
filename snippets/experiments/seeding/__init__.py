"""The seeding-order page: ``measure`` (the experiments), ``figures`` (drawing, tables), ``checks`` (claims).

``python -m snippets.experiments.seeding`` prints the page's main tables.
"""
