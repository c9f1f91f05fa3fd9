"""Export and import formats (see :mod:`graphrag_assets.interop.commands`)."""
