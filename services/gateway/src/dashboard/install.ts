import type { AccountStore } from '../accounts/service';
import type { Kernel } from '../kernel/kernel';
import { dashboardQueries, type DashboardQueries } from './dashboard-queries';

/** The dashboard's queries: its sessions and page figures, and the kernel's shared rows it shows. */
export type DashboardStore = AccountStore & { dashboard: DashboardQueries };

/** The dashboard: server-rendered pages over the same account rules and reports as the APIs. */
export interface Dashboard {
  store: DashboardStore;
}

export function installDashboard(kernel: Kernel): Dashboard {
  return { store: { ...kernel.tenancy, dashboard: dashboardQueries(kernel.db.sql) } };
}
