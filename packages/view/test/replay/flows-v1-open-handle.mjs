// The flows as deployed, from a module that also leaves a handle open, as an application's
// module often does (a metrics timer, a connection pool): `loom replay` must still exit.
export * from './flows-v1.mjs';

setInterval(() => {}, 60_000);
