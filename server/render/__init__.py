"""The roofline PNG and the HTML report (pure rendering from prepared inputs)."""
