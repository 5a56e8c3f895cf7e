import { useState } from 'preact/hooks';

interface PropertySchema {
  type?: string | string[];
  enum?: unknown[];
  description?: string;
  title?: string;
}

interface ObjectSchema {
  type?: string;
  properties?: Record<string, PropertySchema>;
  required?: string[];
}

/**
 * A form for a frontend tool's answer, built from its JSON Schema: one labelled field per property (text,
 * number, checkbox or choice). A schema it cannot draw as fields is answered as JSON in a text area.
 */
export function SchemaForm(props: {
  schema: unknown;
  name: string;
  disabled: boolean;
  onSubmit(payload: unknown): void;
  onDecline(): void;
}) {
  const schema = props.schema as ObjectSchema | undefined;
  const fields =
    schema?.type === 'object' && schema.properties ? Object.entries(schema.properties) : undefined;
  const [values, setValues] = useState<Record<string, string | boolean>>({});
  const [json, setJson] = useState('{}');
  const [error, setError] = useState<string | undefined>();
  const submit = (event: Event) => {
    event.preventDefault();
    if (!fields) {
      try {
        props.onSubmit(JSON.parse(json));
      } catch {
        setError('The answer must be JSON');
      }
      return;
    }
    const payload: Record<string, unknown> = {};
    for (const [key, property] of fields) {
      const value = values[key];
      if (value === undefined || value === '') continue;
      payload[key] = typeOf(property) === 'number' || typeOf(property) === 'integer' ? Number(value) : value;
    }
    props.onSubmit(payload);
  };
  return (
    <form class="schema-form" onSubmit={submit} aria-label={`Answer for ${props.name}`}>
      {fields?.map(([key, property]) => {
        const required = schema?.required?.includes(key) ?? false;
        const label = property.title ?? property.description ?? key;
        const type = typeOf(property);
        if (property.enum) {
          return (
            <label key={key}>
              {label}
              <select
                required={required}
                value={String(values[key] ?? '')}
                onChange={(event) => setValues({ ...values, [key]: event.currentTarget.value })}
              >
                <option value="">Choose…</option>
                {property.enum.map((option) => (
                  <option key={String(option)} value={String(option)}>
                    {String(option)}
                  </option>
                ))}
              </select>
            </label>
          );
        }
        if (type === 'boolean') {
          return (
            <label key={key} class="inline">
              <input
                type="checkbox"
                checked={values[key] === true}
                onChange={(event) => setValues({ ...values, [key]: event.currentTarget.checked })}
              />
              {label}
            </label>
          );
        }
        const id = `answer-${props.name}-${key}`;
        return (
          <div key={key}>
            <label for={id}>{label}</label>
            <input
              id={id}
              type="text"
              inputMode={type === 'number' || type === 'integer' ? 'decimal' : 'text'}
              required={required}
              value={String(values[key] ?? '')}
              onInput={(event) =>
                setValues({ ...values, [key]: (event.currentTarget as HTMLInputElement).value })
              }
            />
          </div>
        );
      })}
      {!fields && (
        <label>
          Answer (JSON)
          <textarea rows={3} value={json} onInput={(event) => setJson(event.currentTarget.value)} />
        </label>
      )}
      {error && <p role="alert">{error}</p>}
      <div class="actions">
        <button type="submit" class="primary" disabled={props.disabled}>
          Send answer
        </button>
        <button type="button" disabled={props.disabled} onClick={props.onDecline}>
          Decline
        </button>
      </div>
    </form>
  );
}

function typeOf(property: PropertySchema): string | undefined {
  return Array.isArray(property.type) ? property.type.find((type) => type !== 'null') : property.type;
}
