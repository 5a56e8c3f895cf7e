/** Structured output shown as data: objects as key/value lists, arrays as lists, long text folded. */
export function StructuredData(props: { value: unknown; label?: string }) {
  const { value } = props;
  if (value === null || typeof value !== 'object') return <Scalar value={value} />;
  if (Array.isArray(value)) {
    return (
      <ol class="data-list" aria-label={props.label}>
        {value.map((item, index) => (
          <li key={index}>
            <StructuredData value={item} />
          </li>
        ))}
      </ol>
    );
  }
  return (
    <dl class="data" aria-label={props.label}>
      {Object.entries(value).map(([key, item]) => (
        <div key={key}>
          <dt>{key}</dt>
          <dd>
            <StructuredData value={item} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

function Scalar({ value }: { value: unknown }) {
  if (typeof value === 'string' && value.length > 160) {
    return (
      <details>
        <summary>
          {value.slice(0, 80)}… ({value.length} characters)
        </summary>
        <pre>{value}</pre>
      </details>
    );
  }
  return (
    <span class={`scalar scalar-${value === null ? 'null' : typeof value}`}>{JSON.stringify(value)}</span>
  );
}
