import { App } from 'aws-cdk-lib';
import { loadFunctionAdapters } from '#infra/function-adapters.ts';
import { buildApp } from '#infra/stack.ts';

// `npx cdk synth|deploy` runs this (cdk.json). Configuration: the context keys in infra/config.ts.
// Each bundle carries only its function's AWS builders: derived from the entries first.
await loadFunctionAdapters();
const app = new App();
buildApp(app);
app.synth();
