"""The tile IR between the checked AST and the emitted Triton (DESIGN.md): expressions
(``expr``), kernels and their statements (``nodes``), the verifier (``verify``), the text dump
(``dump``)."""
