/** Runs the conformance kit against a share of the broken LocalDispatchers; every one of them must fail somewhere. */
import { runBrokenDispatchers } from './run-broken-dispatchers.js';

runBrokenDispatchers(3);
