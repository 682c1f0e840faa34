"""Dashboard widgets: one per module, each painting one panel from the store."""
