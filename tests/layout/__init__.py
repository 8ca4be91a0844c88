"""Where code lives: the import graph of the package, and the shape of this test suite."""
