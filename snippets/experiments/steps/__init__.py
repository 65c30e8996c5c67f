"""The update-step counts page: ``question`` (the second question's setup), ``measure`` (the experiments),
``figures`` (drawing, tables), ``checks`` (claims); ``derive`` holds what figures and checks both read off a result.

``python -m snippets.experiments.steps`` prints the page's main tables.
"""
