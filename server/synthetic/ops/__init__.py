"""Op trees of each attention flavour, one module per family, and the registry that dispatches to them."""
