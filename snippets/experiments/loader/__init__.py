"""The DataLoader-overhead page: ``measure`` (the experiments), ``figures`` (drawing, tables), ``checks`` (claims),
and ``derive`` (numbers derived from results that figures, checks and the page share).

``python -m snippets.experiments.loader`` prints the page's main tables.
"""
