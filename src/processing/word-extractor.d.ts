// Minimal typings for word-extractor@1 (the package ships none).
declare module 'word-extractor' {
  interface TextOptions {
    filterUnicode?: boolean;
  }
  class WordDocument {
    getBody(options?: TextOptions): string;
    getFootnotes(options?: TextOptions): string;
    getEndnotes(options?: TextOptions): string;
    getHeaders(options?: TextOptions & { includeFooters?: boolean }): string;
    getTextboxes(options?: TextOptions & { includeBody?: boolean; includeHeadersAndFooters?: boolean }): string;
  }
  class WordExtractor {
    extract(source: string | Buffer): Promise<WordDocument>;
  }
  export = WordExtractor;
}
