"""Server log -> events: records, batch statistics, readiness and failure alerts."""
