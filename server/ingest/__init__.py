"""Raw trace ingestion (analyze_trace) and the synthetic Kineto trace writer."""
