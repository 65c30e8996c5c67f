"""What the pages run: one module per page. Importing a module does no work; every size is a keyword."""
