/** The `@opentelemetry/api` module's shape; a type only, so nothing is loaded for it. */
export type OtelApi = typeof import('@opentelemetry/api');

let loading: Promise<OtelApi | null> | undefined;

/**
 * `@opentelemetry/api`, imported on first use so that this package loads without it (it is an
 * optional peer dependency); `null` when it is not installed.
 */
export function loadOtelApi(): Promise<OtelApi | null> {
  loading ??= import('@opentelemetry/api').then(
    (api) => api,
    () => null,
  );
  return loading;
}
