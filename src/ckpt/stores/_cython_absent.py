"""What `import cython` gives the modules Cython compiles, when they run as plain Python
without Cython installed (a user's install; setup.py builds the compiled copies)."""

compiled = False
