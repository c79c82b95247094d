/*
 * SyncProbe: goredisson's own driver for Redisson's synchronizers (RSemaphore,
 * RPermitExpirableSemaphore, RCountDownLatch), through Redisson's public API
 * only. The interop suite compiles it at test time against the class path of
 * the Redisson probe (shared/tools/redisson-probe) and runs it as
 *
 *   java -cp <tmp>:<probe class path> SyncProbe redis://127.0.0.1:<port> [version]
 *
 * The line protocol (tags, tids, "ready <client id>", errors) is
 * LineProbe's; a command with a <tid> runs on that tid's own thread.
 *
 *   sem.trysetpermits <name> <n>                   -> true | false
 *   sem.addpermits <name> <n>                      -> ok
 *   sem.acquire <name> <tid> <n>                   -> ok
 *   sem.tryacquire <name> <tid> <n> <waitMs>       -> true | false
 *   sem.release <name> <n>                         -> ok
 *   sem.available <name>                           -> N
 *   sem.drain <name>                               -> N
 *   sem.trysetpermitsttl <name> <n> <ttlMs>        -> true | false
 *   sem.releaseifexists <name> <n>                 -> true | false
 *   sem.delete <name> | sem.exists <name>          -> true | false
 *   sem.expire <name> <ttlMs> | sem.clearexpire <name> -> true | false
 *   sem.remain <name>                              -> ms (Redisson's -2 / -1 as they are)
 *   psem.trysetpermits <name> <n>                  -> true | false
 *   psem.acquire <name> <tid> <leaseMs>            -> id <hex>   (leaseMs -1: never expires)
 *   psem.tryacquire <name> <tid> <waitMs> <leaseMs> -> id <hex> | false
 *   psem.release <name> <id>                       -> ok | err <exception>: <message>
 *   psem.available <name>                          -> N
 *   psem.acquiren <name> <tid> <n> <leaseMs>       -> ids <hex>,<hex>,...
 *   psem.tryacquiren <name> <tid> <n> <waitMs> <leaseMs> -> ids <hex>,... | false
 *   psem.releasen <name> <hex>,<hex>,...           -> ok | err <exception>: <message>
 *   psem.tryrelease <name> <id>                    -> true | false
 *   psem.tryreleasen <name> <hex>,<hex>,...        -> N
 *   psem.updatelease <name> <id> <leaseMs>         -> true | false
 *   psem.leasetime <name> <id>                     -> ms | err ...
 *   psem.setpermits <name> <n> | psem.addpermits <name> <n> -> ok
 *   psem.permits <name> | psem.acquired <name>     -> N
 *   psem.delete <name> | psem.exists <name>        -> true | false
 *   psem.expire <name> <ttlMs>                     -> true | false
 *   latch.trysetcount <name> <n>                   -> true | false
 *   latch.countdown <name>                         -> ok
 *   latch.count <name>                             -> N
 *   latch.await <name> <tid> [waitMs]              -> ok | true | false
 *   latch.delete <name> | latch.exists <name>      -> true | false
 *   id | version | sleep <ms> | quit
 *
 * Redisson wraps an IllegalArgumentException of a release in a
 * RedisException: the error shows both (LineProbe's error format).
 */

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.redisson.api.RCountDownLatch;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

public class SyncProbe {
    public static void main(String[] args) throws Exception {
        LineProbe.serve(args, "sync-probe", config -> config.setCodec(StringCodec.INSTANCE), SyncProbe::exec, SyncProbe::tidOf);
    }

    /** The tid of a command that names one (its third word), else null. */
    private static String tidOf(String[] p) {
        boolean hasTid = p[0].equals("sem.acquire") || p[0].equals("sem.tryacquire")
                || p[0].equals("psem.acquire") || p[0].equals("psem.tryacquire")
                || p[0].equals("psem.acquiren") || p[0].equals("psem.tryacquiren") || p[0].equals("latch.await");
        return hasTid && p.length >= 3 ? p[2] : null;
    }

    private static int num(String[] p, int i) {
        return Integer.parseInt(p[i]);
    }

    private static long ms(String[] p, int i) {
        return Long.parseLong(p[i]);
    }

    private static String exec(RedissonClient client, String[] p) throws Exception {
        switch (p[0]) {
            case "sleep":
                Thread.sleep(ms(p, 1));
                return "ok";
        }
        String kind = p[0].substring(0, Math.max(0, p[0].indexOf('.')));
        switch (kind) {
            case "sem":
                return semaphore(p, client.getSemaphore(p[1]));
            case "psem":
                return permits(p, client.getPermitExpirableSemaphore(p[1]));
            case "latch":
                return latch(p, client.getCountDownLatch(p[1]));
        }
        return "err unknown command " + p[0];
    }

    private static String semaphore(String[] p, RSemaphore s) throws Exception {
        switch (p[0]) {
            case "sem.trysetpermits":
                return String.valueOf(s.trySetPermits(num(p, 2)));
            case "sem.addpermits":
                s.addPermits(num(p, 2));
                return "ok";
            case "sem.acquire":
                s.acquire(num(p, 3));
                return "ok";
            case "sem.tryacquire":
                return String.valueOf(s.tryAcquire(num(p, 3), Duration.ofMillis(ms(p, 4))));
            case "sem.release":
                s.release(num(p, 2));
                return "ok";
            case "sem.available":
                return String.valueOf(s.availablePermits());
            case "sem.drain":
                return String.valueOf(s.drainPermits());
            case "sem.trysetpermitsttl":
                return String.valueOf(s.trySetPermits(num(p, 2), Duration.ofMillis(ms(p, 3))));
            case "sem.releaseifexists":
                return String.valueOf(s.releaseIfExists(num(p, 2)));
            case "sem.delete":
                return String.valueOf(s.delete());
            case "sem.exists":
                return String.valueOf(s.isExists());
            case "sem.expire":
                return String.valueOf(s.expire(Duration.ofMillis(ms(p, 2))));
            case "sem.clearexpire":
                return String.valueOf(s.clearExpire());
            case "sem.remain":
                return String.valueOf(s.remainTimeToLive());
        }
        return "err unknown command " + p[0];
    }

    private static String permits(String[] p, RPermitExpirableSemaphore s) throws Exception {
        switch (p[0]) {
            case "psem.trysetpermits":
                return String.valueOf(s.trySetPermits(num(p, 2)));
            case "psem.acquire":
                return "id " + s.acquire(ms(p, 3), TimeUnit.MILLISECONDS);
            case "psem.tryacquire": {
                String id = s.tryAcquire(ms(p, 3), ms(p, 4), TimeUnit.MILLISECONDS);
                return id == null ? "false" : "id " + id;
            }
            case "psem.release":
                s.release(p[2]);
                return "ok";
            case "psem.available":
                return String.valueOf(s.availablePermits());
            case "psem.acquiren":
                return "ids " + String.join(",", s.acquire(num(p, 3), ms(p, 4), TimeUnit.MILLISECONDS));
            case "psem.tryacquiren": {
                List<String> ids = s.tryAcquire(num(p, 3), ms(p, 4), ms(p, 5), TimeUnit.MILLISECONDS);
                return ids.isEmpty() ? "false" : "ids " + String.join(",", ids);
            }
            case "psem.releasen":
                s.release(Arrays.asList(p[2].split(",")));
                return "ok";
            case "psem.tryrelease":
                return String.valueOf(s.tryRelease(p[2]));
            case "psem.tryreleasen":
                return String.valueOf(s.tryRelease(Arrays.asList(p[2].split(","))));
            case "psem.updatelease":
                return String.valueOf(s.updateLeaseTime(p[2], ms(p, 3), TimeUnit.MILLISECONDS));
            case "psem.leasetime":
                return String.valueOf(s.getLeaseTime(p[2]));
            case "psem.setpermits":
                s.setPermits(num(p, 2));
                return "ok";
            case "psem.addpermits":
                s.addPermits(num(p, 2));
                return "ok";
            case "psem.permits":
                return String.valueOf(s.getPermits());
            case "psem.acquired":
                return String.valueOf(s.acquiredPermits());
            case "psem.delete":
                return String.valueOf(s.delete());
            case "psem.exists":
                return String.valueOf(s.isExists());
            case "psem.expire":
                return String.valueOf(s.expire(Duration.ofMillis(ms(p, 2))));
        }
        return "err unknown command " + p[0];
    }

    private static String latch(String[] p, RCountDownLatch l) throws Exception {
        switch (p[0]) {
            case "latch.trysetcount":
                return String.valueOf(l.trySetCount(ms(p, 2)));
            case "latch.countdown":
                l.countDown();
                return "ok";
            case "latch.count":
                return String.valueOf(l.getCount());
            case "latch.await":
                if (p.length > 3) {
                    return String.valueOf(l.await(ms(p, 3), TimeUnit.MILLISECONDS));
                }
                l.await();
                return "ok";
            case "latch.delete":
                return String.valueOf(l.delete());
            case "latch.exists":
                return String.valueOf(l.isExists());
        }
        return "err unknown command " + p[0];
    }
}
