"""What each tool does: one declaration (input model, result model, function) per tool."""
