/** One thing wrong with a declaration, at its JSON path. */
export interface Problem {
  path: string;
  message: string;
  /** Set when the problem is not the vocabulary's: a declaration for another node. */
  wrongNode?: true;
}
