"""Front end: preprocessor, lexer, parser, AST and printer."""
