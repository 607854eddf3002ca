import { App } from 'aws-cdk-lib';
import { buildApp } from '#infra/stack.ts';

// `npx cdk synth|deploy` runs this (cdk.json). Configuration: the context keys in infra/config.ts.
const app = new App();
buildApp(app);
app.synth();
