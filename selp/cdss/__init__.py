"""The collaborative data sharing system (CDSS): peers, schema mappings, update exchange, ProQL."""
