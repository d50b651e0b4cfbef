"""A chat model with two Python tools, evaluated through `OpenAIToolsAgent`."""
