import { BASE_HANDLERS, type HandlerTable } from '../resources/converge.js';
import { serviceHandler } from '../services/service.js';

/** Every resource type the host applies. Archives join when their issue lands. */
export const HANDLERS: HandlerTable = { ...BASE_HANDLERS, service: serviceHandler };
