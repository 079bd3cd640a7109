"""Reference semantics used as test oracles, not by the product: explicit derivation trees and
a brute-force enumerator of them (:mod:`.derivations`), the pattern matcher of Definition 3.3 on
those trees (:mod:`.match`) and the mapping of instrumented trees back to the original program
(:mod:`.origin`). Naive on purpose: correctness over speed."""
