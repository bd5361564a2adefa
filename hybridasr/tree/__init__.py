"""Decision trees and transition models made by the toolkit, without a GMM: the monophone
tree (Kaldi's ``gmm-init-mono``), a transition model for any tree, tree statistics from an
alignment and features (``acc-tree-stats``), phone questions (``cluster-phones``,
``compile-questions``), tree growing and clustering (``build-tree``) and alignment conversion
(``convert-ali``)."""
