"""The graph view: the drawing code (``view.js``, ``view.css``), the data it draws
(:func:`~graphrag_assets.interop.graph_view.data.view_data`) and the page that puts them together
(:func:`~graphrag_assets.interop.graph_view.page.render_page`).

``export --format html`` inlines all three into one file; a web server can send ``view.js`` and
``view.css`` as they are and the data as JSON, and call ``GraphView.mount(element, data)``.
"""
