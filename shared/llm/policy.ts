import { ApiError } from '#shared/http/errors.ts';
import { allowedModels, type PlatformModel, type PlatformModels } from '#shared/llm/platform-models.ts';
import type { Plans } from '#shared/plans/model.ts';

/** 403 `model_not_in_plan`: the organization's plan does not include this platform model. */
export const modelNotInPlan = (model: string) =>
  new ApiError(403, {
    detail: `The model ${model} is not in your organization's plan`,
    code: 'model_not_in_plan',
  });

/**
 * Which platform models exist and which a plan allows (`platform_models`): read at settings save,
 * at conversation start and by the LLM gateway, so all three refuse the same models.
 */
export class PlatformLlmPolicy {
  constructor(
    private readonly models: PlatformModels,
    private readonly plans: () => Plans,
  ) {}

  names(): string[] {
    return this.models.list.map((m) => m.model);
  }

  get(model: string | null | undefined): PlatformModel | undefined {
    return this.models.get(model);
  }

  /** The platform models the plan `planName` (undefined: the default plan) allows. */
  allowed(planName: string | undefined): string[] {
    return allowedModels(this.models, this.plans().plan(planName).platform_models);
  }

  /** Throws 403 `model_not_in_plan` when `model` is a platform model the plan does not allow; user-key models pass. */
  check(model: string | null | undefined, planName: string | undefined): PlatformModel | undefined {
    const m = this.models.get(model);
    if (m && !this.allowed(planName).includes(m.model)) throw modelNotInPlan(m.model);
    return m;
  }
}
