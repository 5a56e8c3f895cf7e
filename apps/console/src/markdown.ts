import DOMPurify from 'dompurify';
import { Marked, type Tokens } from 'marked';

/** Text as HTML text: `<`, `>`, `&` and quotes escaped. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/**
 * GitHub-flavoured Markdown without raw HTML: HTML in the text is shown as text, and an image is a link to it
 * (the page loads nothing from elsewhere; its Content-Security-Policy would refuse it anyway).
 */
const markdown = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    // The page's own headings are h1 and h2: the model's start at h3.
    heading({ tokens, depth }: Tokens.Heading): string {
      const level = Math.min(depth + 2, 6);
      return `<h${level}>${this.parser.parseInline(tokens)}</h${level}>\n`;
    },
    html({ text }: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(text);
    },
    image({ href, text }: Tokens.Image): string {
      return `<a href="${escapeHtml(href)}">${escapeHtml(text || href)}</a>`;
    },
  },
});

let purifier: ReturnType<typeof DOMPurify> | undefined;

/** DOMPurify for this window, with links that open in a new tab without the console as their opener. */
function purify(): ReturnType<typeof DOMPurify> {
  if (purifier) return purifier;
  purifier = DOMPurify(window);
  purifier.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A' && node.hasAttribute('href')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer nofollow');
    }
  });
  return purifier;
}

/**
 * A model's Markdown as sanitised HTML: marked renders it (raw HTML escaped), then DOMPurify keeps only safe
 * elements and attributes (no scripts, event handlers, styles, forms or `javascript:` links).
 */
export function renderMarkdown(text: string): string {
  const html = markdown.parse(text) as string;
  return purify().sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'img', 'svg', 'math'],
    FORBID_ATTR: ['style', 'class', 'id'],
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  });
}
