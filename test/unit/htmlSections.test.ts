import { htmlSections } from '../../src/processing/extractWorker';

describe('htmlSections: entities in extracted .docx HTML', () => {
  it('decodes the named entities it knows and leaves built-in property names as written', () => {
    const text = [...htmlSections('<p>a &amp; b &constructor; &toString; &__proto__; &lt;x&gt; &#x41;</p>')].map((s) => s.text).join(' ');
    expect(text).toContain('a & b &constructor; &toString; &__proto__; <x> A');
    expect(text).not.toContain('function');
  });
});
